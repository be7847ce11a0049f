# A no-op cluster: nothing is created in any cloud. One terraform_data stands
# in for the shared infrastructure a real cluster module would create (a
# network and the control-plane load balancer) and records what the module
# was given, so plans and state are real while nothing is provisioned.

locals {
  # A real module would create a load balancer; this one names an endpoint
  # in the .invalid TLD (RFC 2606), which never resolves. It depends only on
  # the object's name, so it stays the same on every apply.
  generated_endpoint = {
    host = "noop-${var.captf_object.name}.invalid"
    port = 6443
  }

  # The convention for a load balancer's backend port: the cluster network's
  # API server port, else 6443.
  backend_port = coalesce(try(var.cluster_network.api_server_port, null), 6443)
}

resource "terraform_data" "load_balancer" {
  input = {
    cluster                   = var.captf_cluster
    object                    = var.captf_object
    tags                      = var.captf_tags
    control_plane_endpoint    = var.control_plane_endpoint
    backend_port              = local.backend_port
    kubernetes_version        = var.kubernetes_version
    control_plane_initialized = var.control_plane_initialized
    cluster_network           = var.cluster_network
    api_token_given           = var.api_token != null
    notes                     = var.notes
  }
}
