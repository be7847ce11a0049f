# tofu test for the no-op cluster module. Runs share one state, in order, the
# way successive applies of one TerraformCluster would.

variables {
  captf_contract = "v1alpha1"
  captf_cluster  = { name = "prod", namespace = "team-a" }
  captf_object   = { kind = "TerraformCluster", name = "prod", namespace = "team-a" }
  captf_tags = {
    "captf.io/cluster"    = "prod"
    "captf.io/namespace"  = "team-a"
    "captf.io/kind"       = "TerraformCluster"
    "captf.io/name"       = "prod"
    "captf.io/managed-by" = "captf"
    "captf.io/template"   = ""
  }
  control_plane_endpoint    = null
  kubernetes_version        = null
  control_plane_initialized = false
  cluster_network           = null
}

run "defaults_generate_an_endpoint" {
  assert {
    condition     = output.control_plane_endpoint == { host = "noop-prod.invalid", port = 6443 }
    error_message = "Without an endpoint input the module must report noop-<object name>.invalid:6443."
  }
  assert {
    condition     = output.failure_domains == [{ name = "fd1", control_plane = true, attributes = {} }]
    error_message = "The module must report the single control-plane failure domain fd1."
  }
  assert {
    condition     = output.exports == { backend_id = "noop-backend-${terraform_data.load_balancer.id}" }
    error_message = "exports must carry the stand-in load balancer's id."
  }
  assert {
    condition     = output.health == { state = "running", healthy = true, message = null, reasons = [] }
    error_message = "health must be running and healthy."
  }
  assert {
    condition     = terraform_data.load_balancer.input.tags == tomap(var.captf_tags)
    error_message = "The stand-in load balancer must carry captf_tags."
  }
  assert {
    condition     = terraform_data.load_balancer.input.backend_port == 6443
    error_message = "Without a cluster network the backend port must default to 6443."
  }
}

run "reapply_keeps_endpoint_and_exports" {
  variables {
    first_endpoint = run.defaults_generate_an_endpoint.control_plane_endpoint
    first_exports  = run.defaults_generate_an_endpoint.exports
  }
  assert {
    condition     = output.control_plane_endpoint == var.first_endpoint
    error_message = "The generated endpoint must stay the same across applies."
  }
  assert {
    condition     = output.exports == var.first_exports
    error_message = "exports must stay the same across applies: every machine and pool consumes them."
  }
}

run "endpoint_from_input" {
  variables {
    control_plane_endpoint    = { host = "api.prod.example.com", port = 443 }
    kubernetes_version        = "v1.36.2"
    control_plane_initialized = true
    cluster_network = {
      pods            = ["192.168.0.0/16"]
      services        = ["10.96.0.0/12"]
      service_domain  = null
      api_server_port = 6444
    }
    # OpenTofu 1.12 knows only the previous run's outputs here.
    previous_exports = run.reapply_keeps_endpoint_and_exports.exports
  }
  assert {
    condition     = output.control_plane_endpoint == { host = "api.prod.example.com", port = 443 }
    error_message = "A user-set endpoint must be reported unchanged."
  }
  assert {
    condition     = terraform_data.load_balancer.input.backend_port == 6444
    error_message = "The backend port must follow cluster_network.api_server_port."
  }
  assert {
    condition     = terraform_data.load_balancer.input.cluster_network.service_domain == null
    error_message = "A null service_domain must be accepted as is."
  }
  assert {
    condition     = output.exports == var.previous_exports
    error_message = "An in-place input change must not change exports."
  }
}

run "cluster_network_without_port" {
  variables {
    cluster_network = {
      pods            = []
      services        = []
      service_domain  = "cluster.local"
      api_server_port = null
    }
  }
  assert {
    condition     = terraform_data.load_balancer.input.backend_port == 6443
    error_message = "A null api_server_port must fall back to 6443."
  }
}

run "rejects_other_contract_versions" {
  command = plan
  variables {
    captf_contract = "v1alpha2"
  }
  expect_failures = [var.captf_contract]
}

run "rejects_out_of_range_endpoint_port" {
  command = plan
  variables {
    control_plane_endpoint = { host = "api.prod.example.com", port = 70000 }
  }
  expect_failures = [var.control_plane_endpoint]
}

run "rejects_empty_endpoint_host" {
  command = plan
  variables {
    control_plane_endpoint = { host = "", port = 6443 }
  }
  expect_failures = [var.control_plane_endpoint]
}
