# The pool's members and health, from the group's member listing and its
# target size. Pure expressions, no provider, so tests/ runs anywhere with
# `tofu test`; the pool module feeds it what Compute Engine reported.
#
# Health, the first matching row wins:
#
# | situation                                                   | state                 | reasons                                               |
# |-------------------------------------------------------------|-----------------------|-------------------------------------------------------|
# | the group no longer exists                                  | terminated            | InstanceGroupNotFound                                 |
# | target size 0, no autoscaler minimum above 0 still to reach | running, healthy      | none                                                  |
# | no members yet                                              | pending               | NoMembers                                             |
# | a member degraded, stopped or unknown                       | worst of those three  | <reason>:<instance> affected, then starting; +Scaling |
# | otherwise                                                   | running (healthy only | starting members; ScalingInProgress while the count   |
# |                                                             | all running at size)  | differs from the target size                          |

terraform {
  required_version = ">= 1.5.0"
}

locals {
  # Compute Engine instance status -> the contract's health states.
  status_health = {
    RUNNING        = { state = "running", reason = null }
    PENDING        = { state = "pending", reason = "InstancePending" }
    PROVISIONING   = { state = "pending", reason = "InstanceProvisioning" }
    STAGING        = { state = "pending", reason = "InstanceStaging" }
    REPAIRING      = { state = "degraded", reason = "InstanceRepairing" }
    PENDING_STOP   = { state = "stopped", reason = "InstancePendingStop" }
    STOPPING       = { state = "stopped", reason = "InstanceStopping" }
    STOPPED        = { state = "stopped", reason = "InstanceStopped" }
    SUSPENDING     = { state = "stopped", reason = "InstanceSuspending" }
    SUSPENDED      = { state = "stopped", reason = "InstanceSuspended" }
    TERMINATED     = { state = "stopped", reason = "InstanceTerminated" }
    DEPROVISIONING = { state = "terminated", reason = "InstanceDeprovisioning" }
  }
  unknown_health = { state = "unknown", reason = "UnknownState" }

  # Member URLs end in projects/<project>/zones/<zone>/instances/<name>.
  instance_url = "projects/([^/]+)/zones/([^/]+)/instances/([^/]+)$"
  parsed = [
    for m in var.members : {
      parts  = regex(local.instance_url, m.instance)
      status = upper(coalesce(m.status, "UNKNOWN"))
    } if can(regex(local.instance_url, m.instance))
  ]
  members = [
    for p in local.parsed : {
      # What cloud-provider-gcp writes to Node.spec.providerID.
      provider_id = "gce://${p.parts[0]}/${p.parts[1]}/${p.parts[2]}"
      name        = p.parts[2]
      zone        = p.parts[1]
      state       = lookup(local.status_health, p.status, local.unknown_health).state
      reason      = lookup(local.status_health, p.status, local.unknown_health).reason
    }
  ]

  # A member being deleted (DEPROVISIONING) is no longer a member. Every
  # other one stays, stopped or not: dropping one would make Cluster API
  # delete its Node.
  live_by_id = { for m in local.members : m.provider_id => m... if m.state != "terminated" }
  live_ids   = sort(keys(local.live_by_id))
  live       = [for id in local.live_ids : local.live_by_id[id][0]]

  count         = length(local.live)
  at_size       = local.count == var.target_size
  problem_order = ["degraded", "stopped", "unknown"]
  worst         = [for s in local.problem_order : s if contains(local.live[*].state, s)]
  affected      = [for m in local.live : "${m.reason}:${m.name}" if contains(local.problem_order, m.state)]
  starting      = [for m in local.live : "${m.reason}:${m.name}" if m.state == "pending"]
  scaling       = local.at_size ? [] : ["ScalingInProgress"]

  health = (
    !var.group_found ? {
      state   = "terminated"
      healthy = false
      message = "Instance group ${var.group_name} no longer exists."
      reasons = ["InstanceGroupNotFound"]
    } :
    var.target_size == 0 && !var.awaiting_minimum ? {
      state   = "running"
      healthy = true
      message = "Instance group ${var.group_name} is scaled to zero."
      reasons = []
    } :
    local.count == 0 ? {
      state   = "pending"
      healthy = false
      message = "Instance group ${var.group_name} has no members yet."
      reasons = ["NoMembers"]
    } :
    length(local.worst) > 0 ? {
      state   = local.worst[0]
      healthy = false
      message = "Instance group ${var.group_name}: ${length(local.affected)} of ${local.count} members ${local.worst[0]} or worse, target size ${var.target_size}."
      reasons = concat(local.affected, local.starting, local.scaling)
    } :
    {
      state   = "running"
      healthy = length(local.starting) == 0 && local.at_size
      message = length(local.starting) == 0 && local.at_size ? null : "Instance group ${var.group_name}: ${local.count - length(local.starting)} of ${var.target_size} members running, ${length(local.starting)} starting."
      reasons = concat(local.starting, local.scaling)
    }
  )
}
