# The scale set's instances, read on every refresh, and the pool's
# membership and health from them (modules/membership).

# Whether the scale set exists, without failing when it does not (reading a
# missing scale set fails). Subscription-wide and filtered to the cluster's
# resource group below: a listing scoped to a deleted resource group fails,
# which would block every destroy. It depends on no resource, so it is read
# at plan time; on the first apply and on a new generation it finds
# nothing, and the pool is pending until the next refresh.
data "azurerm_resources" "pool_scale_set_listing" {
  name = local.scale_set_name
  type = "Microsoft.Compute/virtualMachineScaleSets"

  lifecycle {
    # Here, not on the scale set: without exports the scale set has count 0.
    precondition {
      condition     = local.exports_usable
      error_message = "The TerraformCluster is externally managed (captf_cluster_outputs is {}): set spec.variables.external_cluster_exports on the TerraformMachinePool to exports of schema captf.io/azure-cluster/v1."
    }
    # The contract inputs (inputs.tf) are generated; this module's own rules on them are these.
    precondition {
      condition     = local.exports_schema_matches
      error_message = "captf_cluster_outputs must be {} or exports of schema captf.io/azure-cluster/v1: the TerraformCluster runs a module other than azure-cluster."
    }
    precondition {
      condition     = local.capacity_within_limit
      error_message = "A scale set holds at most 1000 instances: lower the MachinePool's replicas (${var.replicas}) or its cluster-api-autoscaler-node-group-max-size annotation."
    }
  }
}

locals {
  scale_set_listed = length([
    for r in data.azurerm_resources.pool_scale_set_listing.resources : r
    if lower(r.resource_group_name) == lower(coalesce(local.resource_group_name, "-"))
  ]) > 0
}

# Instances with power state, address and zone; paged, so never truncated.
# Read only when the listing found the scale set.
data "azurerm_virtual_machine_scale_set" "pool_scale_set_status" {
  count = local.pool_plannable && local.scale_set_listed ? 1 : 0

  name                = local.scale_set_name
  resource_group_name = local.resource_group_name
}

locals {
  scale_set_exists = length(azurerm_linux_virtual_machine_scale_set.pool_scale_set) > 0
  scale_set_id     = one(azurerm_linux_virtual_machine_scale_set.pool_scale_set[*].id)
  # What cloud-provider-azure writes, with a lowercase resource group; null
  # once the scale set is gone.
  provider_id = local.scale_set_exists ? "azure:///subscriptions/${lower(coalesce(local.subscription_id, "-"))}/resourceGroups/${lower(coalesce(local.resource_group_name, "-"))}/providers/Microsoft.Compute/virtualMachineScaleSets/${one(azurerm_linux_virtual_machine_scale_set.pool_scale_set[*].name)}" : null
  # The capacity as last refreshed, which Azure Autoscale sets; read
  # through a splat, since the scale set's custom data is sensitive.
  observed_capacity = one(azurerm_linux_virtual_machine_scale_set.pool_scale_set[*].instances)
  instance_listing = [
    for i in flatten(data.azurerm_virtual_machine_scale_set.pool_scale_set_status[*].instances) : {
      instance_id        = i.instance_id
      computer_name      = i.computer_name
      power_state        = i.power_state
      private_ip_address = i.private_ip_address
      zone               = i.zone
    }
  ]
}

module "membership" {
  source = "./modules/membership"

  scale_set_name   = local.scale_set_name
  scale_set_exists = local.scale_set_exists
  scale_set_listed = local.scale_set_listed
  capacity         = local.observed_capacity
  provider_id      = local.provider_id
  instances        = local.instance_listing
}
