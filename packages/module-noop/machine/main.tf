# A no-op machine: nothing is created in any cloud. One terraform_data stands
# in for the instance and records what a real module would configure it with.

resource "terraform_data" "instance" {
  input = {
    cluster            = var.captf_cluster
    object             = var.captf_object
    tags               = var.captf_tags
    name               = var.machine_name
    control_plane      = var.control_plane
    failure_domain     = var.failure_domain
    kubernetes_version = var.kubernetes_version
    # What a real instance would take from the cluster module.
    backend_id = try(var.captf_cluster_outputs.backend_id, null)
    # Decoding proves the controller's base64 round-trips; only a digest is
    # kept, so the join token never reaches the state.
    bootstrap_format = var.bootstrap_format
    user_data_sha256 = sha256(base64decode(var.bootstrap_data))
  }
}

# What a real module would observe of its instance (see var.health_state_url).
data "terraform_remote_state" "observed" {
  count   = var.health_state_url == null ? 0 : 1
  backend = "http"
  config = {
    address = "${var.health_state_url}/${var.captf_object.name}"
  }
  defaults = {
    health = null
  }
}

locals {
  observed_health = try(data.terraform_remote_state.observed[0].outputs.health, null)
}

# Holds a run until the URL answers (see var.hold_apply_url): a step that waits on
# something the test controls, where the image has no shell to sleep in.
data "terraform_remote_state" "hold" {
  count   = var.hold_apply_url == null ? 0 : 1
  backend = "http"
  config = {
    address = var.hold_apply_url
  }
}
