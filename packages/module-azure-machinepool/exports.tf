# What the pool takes from its cluster: the azure-cluster module's exports,
# or external_cluster_exports when the TerraformCluster is externally
# managed and the controller passes {}.
locals {
  externally_managed = try(length(var.captf_cluster_outputs) == 0, false)
  # A tuple, not a conditional, picks one: the two may be objects of
  # different shapes, which a conditional's two results may not.
  exports = [var.captf_cluster_outputs, var.external_cluster_exports][local.externally_managed ? 1 : 0]
  # Without exports nothing can be placed: the scale set and the autoscale
  # setting are not created, and the listing's precondition says why.
  exports_usable         = local.exports != null
  exports_schema_matches = local.externally_managed || try(var.captf_cluster_outputs.schema == "captf.io/azure-cluster/v1", false)
  # Exports of another module's schema place nothing either (placement.tf):
  # the listing's precondition names the mismatch; nothing plans with nulls.
  exports_placeable = local.exports_usable && local.exports_schema_matches

  subscription_id     = try(local.exports.subscription_id, null)
  location            = try(local.exports.region, null)
  resource_group_name = try(local.exports.resource_group_name, null)
  export_zones        = try(sort(keys(local.exports.failure_domains)), [])
  # Pool instances are workers: the worker subnet, security groups and
  # identity.
  subnet_id                     = try(local.exports.worker_subnet_id, null)
  admin_username                = try(local.exports.admin_username, null)
  admin_ssh_public_key          = try(local.exports.admin_ssh_public_key, null)
  identity_id                   = try(local.exports.worker.identity_id, null)
  identity_client_id            = try(local.exports.worker.identity_client_id, null)
  network_security_group_id     = try(local.exports.worker.network_security_group_id, null)
  application_security_group_id = try(local.exports.worker.application_security_group_id, null)

  # /etc/kubernetes/azure.json for cloud-provider-azure, as the worker
  # identity.
  cloud_provider_config = jsonencode(merge(try(local.exports.cloud_provider_config, {}), {
    userAssignedIdentityID = local.identity_client_id
  }))
}
