# GCE metadata (the GCP pool): user data for every bootstrap format, with
# and without node labels, and the refusals. Ignition is decoded; the GCP
# module sends base64 user data with user-data-encoding=base64.

variables {
  # "## template: jinja\n#cloud-config\nruncmd: [kubeadm join]\n"
  bootstrap_data   = "IyMgdGVtcGxhdGU6IGppbmphCiNjbG91ZC1jb25maWcKcnVuY21kOiBba3ViZWFkbSBqb2luXQo="
  bootstrap_format = "cloud-config"
  node_labels      = {}
  module_name      = "gcp-machinepool"
  boundary         = "captf-test-0a1b2c3d"
  decode_ignition  = true
}

run "cloud_config_without_labels_is_sent_as_is" {
  assert {
    condition     = nonsensitive(output.user_data) == var.bootstrap_data
    error_message = "Without labels to register the bootstrap data goes unchanged."
  }
  assert {
    condition     = output.user_data_base64
    error_message = "cloud-config goes with user-data-encoding=base64."
  }
  assert {
    condition     = output.user_data_bytes == length(var.bootstrap_data) && !output.ignition_with_labels && !output.gzipped_ignition
    error_message = "The size of base64 user-data is its length; nothing is refused."
  }
}

run "cloud_config_with_labels_is_a_multipart_message" {
  variables {
    node_labels = {
      "tier"                           = "batch"
      "team.example.com/owner"         = "platform"
      "node.kubernetes.io/pool"        = "workers"
      "topology.kubernetes.io/zone"    = "us-central1-a"
      "node-role.kubernetes.io/worker" = ""
      "foo.k8s.io/bar"                 = "x"
      "kubernetes.io/hostname"         = "pinned"
      "sub.kubelet.kubernetes.io/x"    = "y"
    }
  }

  assert {
    condition     = startswith(base64decode(nonsensitive(output.user_data)), "Content-Type: multipart/mixed; boundary=\"captf-test-0a1b2c3d\"\nMIME-Version: 1.0\n\n--captf-test-0a1b2c3d\nContent-Type: text/cloud-boothook; charset=\"utf-8\"\n")
    error_message = "With labels the user-data is a MIME multipart message that opens with the boothook."
  }
  assert {
    condition     = strcontains(base64decode(nonsensitive(output.user_data)), "filename=\"captf-boothook.sh\"\n\n#!/bin/sh\n")
    error_message = "The boothook part is a shell script."
  }
  assert {
    condition     = strcontains(base64decode(nonsensitive(output.user_data)), "captf_node_labels='kubernetes.io/hostname=pinned,node.kubernetes.io/pool=workers,sub.kubelet.kubernetes.io/x=y,team.example.com/owner=platform,tier=batch,topology.kubernetes.io/zone=us-central1-a'\n")
    error_message = "The boothook gets the labels the kubelet may set, sorted and comma-joined."
  }
  assert {
    condition     = output.dropped_node_labels == tolist(["foo.k8s.io/bar", "node-role.kubernetes.io/worker"])
    error_message = "Labels the kubelet may not set are dropped and reported, sorted."
  }
  assert {
    condition     = strcontains(base64decode(nonsensitive(output.user_data)), "--captf-test-0a1b2c3d\nContent-Type: text/plain; charset=\"utf-8\"\nMIME-Version: 1.0\nContent-Transfer-Encoding: base64\nContent-Disposition: attachment; filename=\"captf-bootstrap-data\"\n\n${var.bootstrap_data}\n--captf-test-0a1b2c3d--\n")
    error_message = "The bootstrap data follows unchanged as the last, base64, part."
  }
  assert {
    condition     = endswith(base64decode(nonsensitive(output.user_data)), "\n--captf-test-0a1b2c3d--\n")
    error_message = "The message ends with the closing boundary."
  }
  assert {
    condition     = output.user_data_base64 && output.user_data_bytes == length(nonsensitive(output.user_data))
    error_message = "The message goes base64, and its size is that of the base64."
  }
  assert {
    condition     = length(output.registered_node_labels) == 6
    error_message = "Six of the eight labels are registered."
  }
}

run "cloud_config_payload_lines_are_wrapped" {
  variables {
    # 200 base64 characters: the part wraps them at 76 columns.
    bootstrap_data = join("", [for i in range(50) : "QUJD"])
    node_labels    = { tier = "batch" }
  }

  assert {
    condition = strcontains(base64decode(nonsensitive(output.user_data)), join("\n", [
      join("", [for i in range(19) : "QUJD"]),
      join("", [for i in range(19) : "QUJD"]),
      join("", [for i in range(12) : "QUJD"]),
    ]))
    error_message = "The base64 part is wrapped at 76 characters a line."
  }
}

run "gzipped_cloud_config_with_labels_is_a_gzip_part" {
  variables {
    # gzip of "#cloud-config\n"
    bootstrap_data = "H4sIAAAAAAAAA1NOzskvTdFNzs9Ly0znAgAFVrO4DgAAAA=="
    node_labels    = { tier = "batch" }
  }

  assert {
    condition     = strcontains(base64decode(nonsensitive(output.user_data)), "Content-Type: application/x-gzip\nMIME-Version: 1.0\nContent-Transfer-Encoding: base64\n")
    error_message = "Gzipped data is an application/x-gzip part, which cloud-init decompresses."
  }
  assert {
    condition     = output.gzipped && !output.gzipped_ignition
    error_message = "Gzipped cloud-config is fine."
  }
}

run "gzipped_cloud_config_without_labels_is_sent_as_is" {
  variables {
    bootstrap_data = "H4sIAAAAAAAAA1NOzskvTdFNzs9Ly0znAgAFVrO4DgAAAA=="
  }

  assert {
    condition     = nonsensitive(output.user_data) == var.bootstrap_data && output.user_data_base64
    error_message = "Gzipped cloud-config without labels goes unchanged; cloud-init decompresses it."
  }
}

run "ignition_is_decoded" {
  variables {
    bootstrap_format = "ignition"
    # {"ignition":{"version":"3.4.0"},"x":"é"}: 41 bytes, 40 characters
    bootstrap_data = "eyJpZ25pdGlvbiI6eyJ2ZXJzaW9uIjoiMy40LjAifSwieCI6IsOpIn0="
  }

  assert {
    condition     = nonsensitive(output.user_data) == "{\"ignition\":{\"version\":\"3.4.0\"},\"x\":\"é\"}"
    error_message = "Ignition reads user-data as it is, so the data goes decoded."
  }
  assert {
    condition     = !output.user_data_base64
    error_message = "Ignition user-data has no user-data-encoding."
  }
  assert {
    condition     = output.user_data_bytes == 41
    error_message = "The size of decoded user-data counts bytes, not characters."
  }
  assert {
    condition     = !output.ignition_with_labels && !output.gzipped_ignition
    error_message = "Plain Ignition without labels is accepted."
  }
}

run "ignition_with_only_forbidden_labels_is_accepted" {
  variables {
    bootstrap_format = "ignition"
    bootstrap_data   = "eyJpZ25pdGlvbiI6eyJ2ZXJzaW9uIjoiMy40LjAifX0="
    node_labels      = { "node-role.kubernetes.io/worker" = "" }
  }

  assert {
    condition     = !output.ignition_with_labels && nonsensitive(output.user_data) == "{\"ignition\":{\"version\":\"3.4.0\"}}"
    error_message = "Labels the kubelet may not set are dropped, so there is nothing to register."
  }
  assert {
    condition     = output.dropped_node_labels == tolist(["node-role.kubernetes.io/worker"])
    error_message = "The dropped label is reported."
  }
}

run "ignition_with_labels_is_refused" {
  variables {
    bootstrap_format = "ignition"
    bootstrap_data   = "eyJpZ25pdGlvbiI6eyJ2ZXJzaW9uIjoiMy40LjAifX0="
    node_labels      = { tier = "batch" }
  }

  assert {
    condition     = output.ignition_with_labels
    error_message = "Ignition with labels to register is flagged for refusal."
  }
}

run "gzipped_ignition_is_refused" {
  variables {
    bootstrap_format = "ignition"
    # gzip of {"ignition":{"version":"3.4.0"}}: not UTF-8 once decoded
    bootstrap_data = "H4sIAAAAAAAAA6tWykzPyyzJzM9TsqpWKkstKgYzlYz1TPQMlGprAWys13sgAAAA"
  }

  assert {
    condition     = output.gzipped_ignition && nonsensitive(output.user_data) == ""
    error_message = "Gzipped Ignition is flagged for refusal and never decoded."
  }
}

run "oversized_user_data_is_measured" {
  variables {
    # 262148 base64 characters: 4 over the 256 KB limit.
    bootstrap_data = format("%0262148d", 0)
  }

  assert {
    condition     = output.user_data_bytes == 262148 && output.user_data_bytes > 262144
    error_message = "user-data over 256 KB is measured over the limit."
  }
}

run "user_data_at_the_limit_fits" {
  variables {
    bootstrap_data = format("%0262144d", 0)
  }

  assert {
    condition     = output.user_data_bytes == 262144
    error_message = "Exactly 256 KB fits."
  }
}

run "rejects_unknown_format" {
  command = plan

  variables {
    bootstrap_format = "shell"
  }

  expect_failures = [var.bootstrap_format]
}
