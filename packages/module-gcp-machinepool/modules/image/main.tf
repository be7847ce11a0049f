# The boot image for the pool's Kubernetes version. Pure expressions, no
# provider, so tests/ runs anywhere with `tofu test`.
#
# A version change must roll the pool, and on GCP it rolls only through the
# image name: a template change that touches nothing but metadata is applied
# as a refresh and replaces no instance. So `image` names the version with a
# placeholder:
#
# | placeholder  | v1.33.4 gives | v1.31.4+rke2r2 gives |
# |--------------|---------------|----------------------|
# | {version}    | v1.33.4       | v1.31.4              |
# | {semver}     | 1.33.4        | 1.31.4               |
# | {slug}       | v1-33-4       | v1-31-4              |
# | {fullslug}   | v1-33-4       | v1-31-4-rke2r2       |
#
# Only {fullslug} keeps a +suffix, so only it makes a suffix-only upgrade
# (+rke2r1 to +rke2r2) change the image.

terraform {
  required_version = ">= 1.5.0"
}

locals {
  placeholders = ["{version}", "{semver}", "{slug}", "{fullslug}"]

  has_version = var.kubernetes_version != null
  # Without the leading v and without build metadata: 1.31.4.
  semver = local.has_version ? trimprefix(split("+", var.kubernetes_version)[0], "v") : null
  # All of the version, build metadata included, as a name: image names
  # allow only [a-z0-9-].
  fullslug   = local.has_version ? "v${replace(lower(trimprefix(var.kubernetes_version, "v")), "/[^a-z0-9]/", "-")}" : null
  has_suffix = local.has_version ? strcontains(var.kubernetes_version, "+") : false

  has_placeholder = var.image == null ? false : anytrue([for p in local.placeholders : strcontains(var.image, p)])
  has_fullslug    = var.image == null ? false : strcontains(var.image, "{fullslug}")

  values = local.has_version ? {
    "{version}"  = "v${local.semver}"
    "{semver}"   = local.semver
    "{slug}"     = "v${replace(local.semver, ".", "-")}"
    "{fullslug}" = local.fullslug
  } : {}

  image = var.image == null || !local.has_version ? var.image : replace(replace(replace(replace(
    var.image,
    "{version}", local.values["{version}"]),
    "{semver}", local.values["{semver}"]),
    "{slug}", local.values["{slug}"]),
  "{fullslug}", local.values["{fullslug}"])
}
