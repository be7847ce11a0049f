# The image for the pool's Kubernetes version. Pure expressions, no
# provider, so tests/ runs anywhere with `tofu test`.
#
# image_id may name the version with {version} (v1.31.4) or {semver}
# (1.31.4); both leave out build metadata such as +rke2r1. A version change
# rolls the pool through a new scale set whatever the image (names.tf), so a
# placeholder is optional here, but one without a version to fill it is an
# error.

terraform {
  required_version = ">= 1.5.0"
}

locals {
  has_version     = var.kubernetes_version != null
  semver          = local.has_version ? trimprefix(split("+", var.kubernetes_version)[0], "v") : null
  has_placeholder = var.image_id == null ? false : strcontains(var.image_id, "{version}") || strcontains(var.image_id, "{semver}")

  image_id = var.image_id == null || !local.has_version ? var.image_id : replace(replace(
    var.image_id,
    "{version}", "v${local.semver}"),
  "{semver}", local.semver)
}
