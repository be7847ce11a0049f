# Azure custom data (the Azure pool): every bootstrap format, with and
# without node labels. cloud-config always carries the boothook, which
# writes azure.json; Ignition stays base64. The refusals do not depend on
# the cloud: gce-metadata.tftest.hcl covers them.

variables {
  # "## template: jinja\n#cloud-config\nruncmd: [kubeadm join]\n"
  bootstrap_data   = "IyMgdGVtcGxhdGU6IGppbmphCiNjbG91ZC1jb25maWcKcnVuY21kOiBba3ViZWFkbSBqb2luXQo="
  bootstrap_format = "cloud-config"
  node_labels      = {}
  boothook_files   = { "/etc/kubernetes/azure.json" = "{\"cloud\":\"AzurePublicCloud\",\"userAssignedIdentityID\":\"7a4b9c7d-2e8f-4a3b-9c4d-7e8f9a0b1c2d\"}" }
  always_boothook  = true
  module_name      = "azure-machinepool"
  boundary         = "captf-test-0a1b2c3d"
}

run "cloud_config_is_always_a_multipart_message" {
  assert {
    condition     = startswith(base64decode(nonsensitive(output.user_data)), "Content-Type: multipart/mixed; boundary=\"captf-test-0a1b2c3d\"\nMIME-Version: 1.0\n\n--captf-test-0a1b2c3d\nContent-Type: text/cloud-boothook; charset=\"utf-8\"\n")
    error_message = "cloud-config custom data is a MIME multipart message that opens with the boothook."
  }
  assert {
    condition     = strcontains(base64decode(nonsensitive(output.user_data)), "if [ ! -e /etc/kubernetes/azure.json ]; then") && strcontains(base64decode(nonsensitive(output.user_data)), "<<'CAPTF_FILE'\n{\"cloud\":\"AzurePublicCloud\",\"userAssignedIdentityID\":\"7a4b9c7d-2e8f-4a3b-9c4d-7e8f9a0b1c2d\"}\nCAPTF_FILE\n")
    error_message = "The boothook writes azure.json for the worker identity when it is absent."
  }
  assert {
    condition     = strcontains(base64decode(nonsensitive(output.user_data)), "captf_node_labels=''\n")
    error_message = "Without labels the node-labels fragment still runs, to clear what an earlier boot wrote."
  }
  assert {
    condition     = strcontains(base64decode(nonsensitive(output.user_data)), "--captf-test-0a1b2c3d\nContent-Type: text/plain; charset=\"utf-8\"\nMIME-Version: 1.0\nContent-Transfer-Encoding: base64\nContent-Disposition: attachment; filename=\"captf-bootstrap-data\"\n\n${var.bootstrap_data}\n--captf-test-0a1b2c3d--\n")
    error_message = "The bootstrap data follows unchanged as the last, base64, part."
  }
  assert {
    condition     = output.user_data_bytes == length(nonsensitive(output.user_data)) && !output.ignition_with_labels && !output.gzipped_ignition
    error_message = "Nothing is refused."
  }
}

run "cloud_config_with_labels" {
  variables {
    node_labels = {
      "team"                           = "payments"
      "node.kubernetes.io/pool"        = "workers"
      "topology.kubernetes.io/zone"    = "westeurope-1"
      "node-role.kubernetes.io/worker" = ""
      "example.k8s.io/tier"            = "gold"
    }
  }

  assert {
    condition     = strcontains(base64decode(nonsensitive(output.user_data)), "captf_node_labels='node.kubernetes.io/pool=workers,team=payments,topology.kubernetes.io/zone=westeurope-1'\n")
    error_message = "The boothook registers the labels the kubelet may set, sorted."
  }
  assert {
    condition     = output.dropped_node_labels == tolist(["example.k8s.io/tier", "node-role.kubernetes.io/worker"])
    error_message = "Labels the kubelet may not set are dropped and reported."
  }
  assert {
    condition     = strcontains(base64decode(nonsensitive(output.user_data)), "/etc/rancher/rke2/config.yaml.d/50-captf-node-labels.yaml") && strcontains(base64decode(nonsensitive(output.user_data)), "# captf node labels: begin")
    error_message = "The boothook carries the shared node-labels fragment."
  }
}

run "gzipped_cloud_config_is_a_gzip_part" {
  variables {
    # gzip of "#cloud-config\n"
    bootstrap_data = "H4sIAAAAAAAAA1NOzskvTdFNzs9Ly0znAgAFVrO4DgAAAA=="
  }

  assert {
    condition     = strcontains(base64decode(nonsensitive(output.user_data)), "Content-Type: application/x-gzip\nMIME-Version: 1.0\nContent-Transfer-Encoding: base64\n") && output.gzipped && !output.gzipped_ignition
    error_message = "Gzipped cloud-config is an application/x-gzip part, which cloud-init decompresses."
  }
}

run "ignition_passes_through" {
  variables {
    bootstrap_format = "ignition"
    # {"ignition":{"version":"3.4.0"}}
    bootstrap_data = "eyJpZ25pdGlvbiI6eyJ2ZXJzaW9uIjoiMy40LjAifX0="
    node_labels    = { "node-role.kubernetes.io/worker" = "" }
  }

  assert {
    condition     = nonsensitive(output.user_data) == var.bootstrap_data
    error_message = "Ignition goes unchanged; a label the kubelet may not set leaves nothing to register."
  }
  assert {
    condition     = !output.ignition_with_labels && !output.gzipped_ignition
    error_message = "Plain Ignition without labels to register is accepted."
  }
}

run "ignition_at_the_limit_fits" {
  variables {
    bootstrap_format = "ignition"
    # 87380 base64 characters: 65,535 bytes.
    bootstrap_data = format("%087380d", 0)
  }

  assert {
    condition     = output.user_data_bytes == 87380
    error_message = "65,535 bytes of custom data fit."
  }
}

run "oversized_custom_data_is_measured" {
  variables {
    bootstrap_data = base64encode(format("%070000d", 0))
  }

  assert {
    condition     = output.user_data_bytes > 87380
    error_message = "Custom data over 65,535 bytes is measured over the limit."
  }
}
