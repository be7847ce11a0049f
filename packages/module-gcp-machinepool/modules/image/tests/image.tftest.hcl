# Image placeholders and the rules that make a version change roll the pool.
# No provider: `tofu init && tofu test` here.

variables {
  image              = "projects/my-images/global/images/capi-ubuntu-2404-{slug}"
  kubernetes_version = "v1.33.4"
}

run "slug" {
  assert {
    condition     = output.image == "projects/my-images/global/images/capi-ubuntu-2404-v1-33-4"
    error_message = "{slug} becomes v1-33-4."
  }
  assert {
    condition     = !output.placeholder_missing && !output.fullslug_missing && !output.version_missing
    error_message = "A placeholder and a plain version break no rule."
  }
}

run "every_placeholder" {
  variables {
    image = "img-{version}-{semver}-{slug}-{fullslug}"
  }

  assert {
    condition     = output.image == "img-v1.33.4-1.33.4-v1-33-4-v1-33-4"
    error_message = "{version}, {semver}, {slug} and {fullslug} become v1.33.4, 1.33.4, v1-33-4 and v1-33-4."
  }
}

run "version_without_leading_v" {
  variables {
    image              = "img-{version}-{semver}-{slug}-{fullslug}"
    kubernetes_version = "1.34.0"
  }

  assert {
    condition     = output.image == "img-v1.34.0-1.34.0-v1-34-0-v1-34-0"
    error_message = "A version without its v gets one where the placeholder has it."
  }
}

run "fullslug_keeps_the_rke2_suffix" {
  variables {
    image              = "projects/my-images/global/images/rke2-ubuntu-2404-{fullslug}"
    kubernetes_version = "v1.31.4+rke2r2"
  }

  assert {
    condition     = output.image == "projects/my-images/global/images/rke2-ubuntu-2404-v1-31-4-rke2r2"
    error_message = "{fullslug} keeps the +rke2rN suffix as -rke2rN."
  }
  assert {
    condition     = output.version_has_suffix && output.has_fullslug && !output.fullslug_missing
    error_message = "{fullslug} satisfies the suffix rule."
  }
}

run "other_placeholders_drop_the_suffix" {
  variables {
    image              = "img-{version}-{semver}-{slug}"
    kubernetes_version = "v1.31.4+rke2r2"
  }

  assert {
    condition     = output.image == "img-v1.31.4-1.31.4-v1-31-4"
    error_message = "{version}, {semver} and {slug} drop the suffix."
  }
  assert {
    condition     = output.fullslug_missing
    error_message = "A suffixed version without {fullslug} breaks the suffix rule."
  }
}

run "image_without_placeholder" {
  variables {
    image = "projects/my-images/global/images/family/capi-ubuntu-2404"
  }

  assert {
    condition     = output.placeholder_missing && output.image == var.image
    error_message = "A version with an image that does not name it breaks the placeholder rule."
  }
}

run "placeholder_without_version" {
  variables {
    kubernetes_version = null
  }

  assert {
    condition     = output.version_missing && !output.placeholder_missing && output.image == var.image
    error_message = "A placeholder with no version to fill it breaks the version rule; the image is left as written."
  }
}

run "no_version_no_placeholder" {
  variables {
    image              = "projects/my-images/global/images/capi-ubuntu-2404-v1-33-4"
    kubernetes_version = null
  }

  assert {
    condition     = !output.version_missing && !output.placeholder_missing && !output.fullslug_missing && output.image == var.image
    error_message = "A fixed image without a version breaks no rule."
  }
}

run "no_image" {
  variables {
    image = null
  }

  assert {
    condition     = output.image == null && !output.has_placeholder && output.placeholder_missing
    error_message = "No image: nothing to fill, and the version is not named."
  }
}
