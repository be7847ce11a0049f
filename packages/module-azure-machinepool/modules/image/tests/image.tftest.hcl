# Image placeholders. No provider: `tofu init && tofu test` here.

variables {
  image_id           = "/communityGalleries/ClusterAPI-f72ceb4f-5159-4c26-a0fe-2ea738f0d019/images/capi-ubun2-2404/versions/{semver}"
  kubernetes_version = "v1.34.1"
}

run "semver" {
  assert {
    condition     = output.image_id == "/communityGalleries/ClusterAPI-f72ceb4f-5159-4c26-a0fe-2ea738f0d019/images/capi-ubun2-2404/versions/1.34.1" && !output.version_missing
    error_message = "{semver} becomes 1.34.1."
  }
}

run "version" {
  variables {
    image_id = "/subscriptions/s/resourceGroups/images/providers/Microsoft.Compute/images/capi-{version}"
  }

  assert {
    condition     = output.image_id == "/subscriptions/s/resourceGroups/images/providers/Microsoft.Compute/images/capi-v1.34.1"
    error_message = "{version} becomes v1.34.1."
  }
}

run "suffix_is_dropped" {
  variables {
    image_id           = "img-{version}-{semver}"
    kubernetes_version = "v1.34.2+rke2r1"
  }

  assert {
    condition     = output.image_id == "img-v1.34.2-1.34.2"
    error_message = "Both placeholders leave out the +suffix."
  }
}

run "fixed_image" {
  variables {
    image_id = "/subscriptions/s/resourceGroups/images/providers/Microsoft.Compute/images/capi"
  }

  assert {
    condition     = output.image_id == var.image_id && !output.has_placeholder && !output.version_missing
    error_message = "An image without a placeholder is used as written."
  }
}

run "placeholder_without_version" {
  variables {
    kubernetes_version = null
  }

  assert {
    condition     = output.version_missing && output.image_id == var.image_id
    error_message = "A placeholder with no version to fill it is flagged; the ID is left as written."
  }
}
