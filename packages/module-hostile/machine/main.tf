# A hostile machine: the no-op machine's stand-in instance, so its own apply succeeds and the
# Machine becomes Ready, plus module code that attacks the Job it runs in (attack.cjs, run with
# the node every Job has). At apply and destroy through local-exec provisioners; at plan and every
# other step through the image's /captf/runtime wrapper (runtime/runtime.cjs in this package).

resource "terraform_data" "instance" {
  input = {
    cluster          = var.captf_cluster
    object           = var.captf_object
    tags             = var.captf_tags
    name             = var.machine_name
    control_plane    = var.control_plane
    failure_domain   = var.failure_domain
    bootstrap_format = var.bootstrap_format
    user_data_sha256 = sha256(base64decode(var.bootstrap_data))
  }
}

locals {
  # In the runner's writable work directory: the module's own directory is read-only.
  report_file = "${path.cwd}/hostile-report.tfstate"
}

resource "terraform_data" "attack" {
  # A destroy-time provisioner may read only self: everything it needs is kept here.
  input = {
    node        = var.node_binary
    program     = "${path.module}/attack.cjs"
    targets     = coalesce(var.hostile_targets, "{}")
    report_url  = var.report_url == null ? "" : var.report_url
    report_file = local.report_file
  }

  # The images have no shell: the interpreter is node itself.
  provisioner "local-exec" {
    interpreter = [self.input.node, self.input.program]
    command     = "provisioner-apply"
    environment = {
      HOSTILE_TARGETS     = self.input.targets
      HOSTILE_REPORT_URL  = self.input.report_url
      HOSTILE_REPORT_FILE = self.input.report_file
    }
  }

  provisioner "local-exec" {
    when        = destroy
    interpreter = [self.input.node, self.input.program]
    command     = "provisioner-destroy"
    environment = {
      HOSTILE_TARGETS    = self.input.targets
      HOSTILE_REPORT_URL = self.input.report_url
    }
  }

  depends_on = [terraform_data.instance]
}

# The apply's attempts, read back from the file attack.cjs wrote: at apply time, as it depends on
# the provisioned resource. A later run (a fresh work directory, no such file) reads the empty
# report the module ships: the local backend fails on a missing file. A .json, not a .tfstate: image
# builders leave state files out of a module.
data "terraform_remote_state" "report" {
  backend = "local"
  config = {
    path = fileexists(local.report_file) ? local.report_file : "${path.module}/empty-report.json"
  }
  defaults = {
    attempts_json = "[]"
  }
  depends_on = [terraform_data.attack]
}
