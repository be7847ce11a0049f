# What the pool takes from its cluster: the gcp-cluster module's exports,
# or external_cluster_exports when the TerraformCluster is externally
# managed and the controller passes {}.
locals {
  externally_managed = try(length(var.captf_cluster_outputs) == 0, false)
  # A tuple, not a conditional, picks one: the two may be objects of
  # different shapes, which a conditional's two results may not.
  exports        = [var.captf_cluster_outputs, var.external_cluster_exports][local.externally_managed ? 1 : 0]
  exports_usable = local.exports != null
  # The contract inputs (inputs.tf) are generated; this module's own rule on them is a precondition.
  exports_schema_matches = local.externally_managed || try(var.captf_cluster_outputs.schema == "captf.io/gcp-cluster/v1", false)

  # Null (or empty) until there are exports: the group's first precondition
  # then says what is missing, instead of an attribute error.
  project         = try(local.exports.project, null)
  region          = try(local.exports.region, null)
  subnetwork      = try(local.exports.subnetwork, null)
  export_zones    = try(sort(keys(local.exports.failure_domains)), [])
  service_account = try(local.exports.worker.service_account, null)
  # Pool instances are workers: the cluster's node and worker tags.
  network_tags = distinct(concat(try(local.exports.worker.network_tags, []), var.additional_network_tags))
}
