# A no-op machine pool: nothing is created in any cloud. terraform_data
# resources stand in for a scaling group and, while autoscaling is on, for the
# desired count a cloud autoscaler would own.

locals {
  autoscaled = var.autoscaling.enabled

  # With autoscaling off the group's size limits are pinned to replicas; with
  # it on they come from the autoscaling input.
  min_size = local.autoscaled ? var.autoscaling.min : var.replicas
  max_size = local.autoscaled ? var.autoscaling.max : var.replicas

  # Where the members land: the requested failure domains, else the
  # cluster's (a real module would spread members over them).
  zones = length(var.failure_domains) > 0 ? var.failure_domains : var.cluster_failure_domains
}

resource "terraform_data" "group" {
  input = {
    cluster            = var.captf_cluster
    object             = var.captf_object
    tags               = var.captf_tags
    name               = var.machinepool_name
    min_size           = local.min_size
    max_size           = local.max_size
    zones              = local.zones
    kubernetes_version = var.kubernetes_version
    node_labels        = var.node_labels
    backend_id         = try(var.captf_cluster_outputs.backend_id, null)
    # Decoding proves the controller's base64 round-trips; only a digest is
    # kept, so the join token never reaches the state. A rotated token
    # updates the group in place, as a new launch template version would.
    bootstrap_format = var.bootstrap_format
    user_data_sha256 = sha256(base64decode(var.bootstrap_data))
  }

  lifecycle {
    # range() lists at most 1024 elements, so this module models at most 1024 members.
    precondition {
      condition     = var.replicas <= 1024 && (!var.autoscaling.enabled || var.autoscaling.min <= 1024)
      error_message = "The no-op pool models at most 1024 members: replicas (${var.replicas}) and, with autoscaling on, its min must be at most 1024."
    }
  }
}

# Autoscaling on: the stand-in for the count a cloud autoscaler owns. It is
# seeded with replicas when autoscaling is switched on and the module never
# writes it again (ignore_changes), so an apply cannot undo a scaling
# decision. Autoscaling off: it does not exist and replicas is the count.
resource "terraform_data" "autoscaler" {
  count = var.autoscaling.enabled ? 1 : 0

  input = {
    group            = terraform_data.group.id
    desired_capacity = var.replicas
  }

  lifecycle {
    ignore_changes = [input.desired_capacity]
  }
}

locals {
  # The group's desired count as the cloud would report it: the autoscaler's
  # value kept inside the current [min, max], or replicas.
  desired_capacity = local.autoscaled ? min(max(one(terraform_data.autoscaler[*].output.desired_capacity), local.min_size), local.max_size) : var.replicas

  # One synthetic member per unit of desired capacity, in creation order.
  member_ids = [
    for i in range(local.desired_capacity) : "noop:///${var.captf_object.namespace}/${var.captf_object.name}/${i}"
  ]
}
