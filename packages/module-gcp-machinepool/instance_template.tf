# Everything a pool instance is made of except its bootstrap data, which
# rotates and lives in the group's all-instances config instead. Every
# argument of a template forces a new one, so any change here creates a new
# template first (name_prefix keeps the names apart), the group moves to it,
# then the old one goes.
resource "google_compute_region_instance_template" "pool_instance_template" {
  can_ip_forward = var.can_ip_forward
  description    = local.description
  labels         = local.labels
  machine_type   = var.machine_type
  name_prefix    = local.template_name_prefix
  project        = local.project
  region         = local.region
  tags           = local.network_tags

  # OS Login instead of SSH keys in metadata, the project's keys blocked, no
  # interactive serial console.
  metadata = {
    "block-project-ssh-keys" = "TRUE"
    "enable-oslogin"         = "TRUE"
    "serial-port-enable"     = "FALSE"
  }

  disk {
    auto_delete  = true
    boot         = true
    disk_size_gb = var.boot_disk_size_gib
    disk_type    = var.boot_disk_type
    labels       = local.labels
    source_image = module.image.image

    dynamic "disk_encryption_key" {
      for_each = var.boot_disk_kms_key_id == null ? [] : [var.boot_disk_kms_key_id]

      content {
        kms_key_self_link = disk_encryption_key.value
      }
    }
  }

  # No access_config, so no external address: nodes reach out through the
  # network's Cloud NAT.
  network_interface {
    stack_type = "IPV4_ONLY"
    subnetwork = local.subnetwork
  }

  # A preempted Spot VM stops; the group starts it again when it can.
  scheduling {
    automatic_restart           = !var.spot
    instance_termination_action = var.spot ? "STOP" : null
    on_host_maintenance         = var.spot ? "TERMINATE" : "MIGRATE"
    preemptible                 = var.spot
    provisioning_model          = var.spot ? "SPOT" : "STANDARD"
  }

  # The cluster's worker service account; the cloud-platform scope leaves
  # access to its IAM roles.
  service_account {
    email  = local.service_account
    scopes = ["cloud-platform"]
  }

  shielded_instance_config {
    enable_integrity_monitoring = true
    enable_secure_boot          = var.secure_boot
    enable_vtpm                 = true
  }

  lifecycle {
    # The group points at the old template until it has moved to the new one.
    create_before_destroy = true
    # A template's labels and its disks' labels force a new template, so a
    # captf_tags change would roll the pool: the template keeps the labels of
    # its creation, and the all-instances config relabels instances in place.
    ignore_changes = [labels, disk[0].labels]

    # Here, on the first resource planned, so that missing exports fail with
    # this message before a provider call fails on a null project.
    precondition {
      condition     = local.exports_usable
      error_message = "The TerraformCluster is externally managed (captf_cluster_outputs is {}): set spec.variables.external_cluster_exports on the TerraformMachinePool to exports of schema captf.io/gcp-cluster/v1."
    }
    precondition {
      condition     = local.exports_schema_matches
      error_message = "captf_cluster_outputs must be {} or exports of schema captf.io/gcp-cluster/v1: the TerraformCluster runs a module other than gcp-cluster."
    }
    precondition {
      condition     = !module.image.placeholder_missing
      error_message = "image \"${coalesce(var.image, "-")}\" has no {version}, {semver}, {slug} or {fullslug} placeholder, but the MachinePool sets kubernetes_version ${coalesce(var.kubernetes_version, "-")}: a version change rolls the pool only through the image name, so name the image with a placeholder, such as capi-ubuntu-2404-{slug}."
    }
    precondition {
      condition     = !module.image.fullslug_missing
      error_message = "kubernetes_version ${coalesce(var.kubernetes_version, "-")} has a +suffix, which only {fullslug} carries: name the image with {fullslug} (v1-31-4-rke2r2) so that a suffix-only upgrade rolls the pool too."
    }
    precondition {
      condition     = !module.image.version_missing
      error_message = "image \"${coalesce(var.image, "-")}\" holds a version placeholder, but the MachinePool has no spec.template.spec.version to fill it: set the version, or name a fixed image."
    }
  }
}
