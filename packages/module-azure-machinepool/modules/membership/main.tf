# The pool's members and health, from the scale set as the last refresh read
# it. Pure expressions, no provider, so tests/ runs anywhere with
# `tofu test`; the pool module feeds it what Azure reported.
#
# Health, the first matching row wins:
#
# | situation                                          | state                 | reasons                                              |
# |----------------------------------------------------|-----------------------|------------------------------------------------------|
# | the scale set is gone (a refresh dropped it)       | terminated            | ScaleSetNotFound                                     |
# | capacity 0                                         | running, healthy      | none                                                 |
# | not listed yet (first apply, new generation),      | pending               | NoMembers                                            |
# | or no instances                                    |                       |                                                      |
# | an instance stopped, deallocated or unknown        | worst of degraded,    | <reason>:<hostname> affected, then starting;         |
# |                                                    | stopped, unknown      | ScalingInProgress while the count is off             |
# | instances starting, or the count off the capacity  | running, not healthy  | PowerState/starting:<hostname>, ScalingInProgress    |
# | every instance running at capacity                 | running, healthy      | none                                                 |
#
# Azure lists an instance until it is deleted, so no instance maps to
# terminated: a deleted one simply leaves the list.

terraform {
  required_version = ">= 1.5.0"
}

locals {
  # Azure VM power states (PowerState/<state>) -> the contract's health.
  power_state_health = {
    running      = { state = "running", reason = null }
    starting     = { state = "pending", reason = "PowerState/starting" }
    stopping     = { state = "stopped", reason = "PowerState/stopping" }
    stopped      = { state = "stopped", reason = "PowerState/stopped" }
    deallocating = { state = "stopped", reason = "PowerState/deallocating" }
    deallocated  = { state = "stopped", reason = "PowerState/deallocated" }
  }
  # No power state yet: the instance is still being created.
  no_power_state = { state = "pending", reason = "PowerState/unknown" }
  unknown_health = { state = "unknown", reason = "UnknownState" }

  members = [
    for i in var.instances : {
      # What cloud-provider-azure writes to Node.spec.providerID.
      provider_id = "${var.provider_id}/virtualMachines/${i.instance_id}"
      instance_id = i.instance_id
      hostname    = coalesce(i.computer_name, i.instance_id)
      zone        = i.zone == null || i.zone == "" ? null : i.zone
      addresses = [
        for a in [
          { type = "InternalIP", address = i.private_ip_address },
          { type = "Hostname", address = i.computer_name },
        ] : a if a.address != null && a.address != ""
      ]
      health = (
        i.power_state == null || i.power_state == "" ? local.no_power_state :
        lookup(local.power_state_health, trimprefix(lower(i.power_state), "powerstate/"), local.unknown_health)
      )
    }
  ]
  by_id = { for m in local.members : m.provider_id => m... }
  ids   = sort(keys(local.by_id))
  live  = [for id in local.ids : local.by_id[id][0]]

  count         = length(local.live)
  at_capacity   = var.capacity != null && local.count == var.capacity
  problem_order = ["degraded", "stopped", "unknown"]
  worst         = [for s in local.problem_order : s if contains([for m in local.live : m.health.state], s)]
  affected      = [for m in local.live : "${m.health.reason}:${m.hostname}" if contains(local.problem_order, m.health.state)]
  starting      = [for m in local.live : "${m.health.reason}:${m.hostname}" if m.health.state == "pending"]
  scaling       = local.at_capacity ? [] : ["ScalingInProgress"]

  health = (
    !var.scale_set_exists ? {
      state   = "terminated"
      healthy = false
      message = "Scale set ${var.scale_set_name} not found."
      reasons = ["ScaleSetNotFound"]
    } :
    var.capacity == 0 ? {
      state   = "running"
      healthy = true
      message = "Scale set ${var.scale_set_name} is at capacity 0."
      reasons = []
    } :
    !var.scale_set_listed || local.count == 0 ? {
      state   = "pending"
      healthy = false
      message = "Scale set ${var.scale_set_name} has no members yet."
      reasons = ["NoMembers"]
    } :
    length(local.worst) > 0 ? {
      state   = local.worst[0]
      healthy = false
      message = "Scale set ${var.scale_set_name}: ${length(local.affected)} of ${local.count} instances ${local.worst[0]} or worse."
      reasons = concat(local.affected, local.starting, local.scaling)
    } :
    {
      state   = "running"
      healthy = length(local.starting) == 0 && local.at_capacity
      message = length(local.starting) == 0 && local.at_capacity ? null : "Scale set ${var.scale_set_name}: ${local.count - length(local.starting)} of ${coalesce(var.capacity, 0)} instances running, ${length(local.starting)} starting."
      reasons = concat(local.starting, local.scaling)
    }
  )
}
