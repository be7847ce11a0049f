# Names, from the pool's namespace and MachinePool name, with 8 hex
# characters of their hash so that cut names stay unique. Compute Engine
# names are lowercase letters, digits and -, start with a letter and end
# with a letter or digit.
locals {
  pool_key  = "${var.captf_object.namespace}/${var.machinepool_name}"
  pool_hash = substr(sha256(local.pool_key), 0, 8)
  pool_stem = replace(lower("captf-${var.captf_object.namespace}-${var.machinepool_name}"), "/[^a-z0-9-]/", "-")

  # The group and its autoscaler: at most 63 characters.
  group_name = "${trimsuffix(substr(local.pool_stem, 0, 54), "-")}-${local.pool_hash}"
  # Instances are <base>-<4 characters>, and an instance's name is its
  # Node's, so the base keeps to 58 characters.
  base_instance_name = "${trimsuffix(substr(local.pool_stem, 0, 49), "-")}-${local.pool_hash}"
  # The provider appends 26 characters to a name_prefix of up to 37.
  template_name_prefix = "${trimsuffix(substr(local.pool_stem, 0, 27), "-")}-${local.pool_hash}-"

  # Descriptions name objects, never captf_tags: a description cannot change
  # on the group without replacing it, and captf.io/template can change.
  description = "captf machine pool ${local.pool_key} of cluster ${var.captf_cluster.namespace}/${var.captf_cluster.name}"

  # The MIME boundary of the user-data: "-" never occurs in base64.
  mime_boundary = "captf-boundary-${local.pool_hash}"
}
