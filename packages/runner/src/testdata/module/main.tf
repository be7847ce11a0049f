# A module that creates nothing outside its state: what the runner's integration tests apply.
variable "name" {
  type = string
}

# Changing it replaces terraform_data.server: the destructive-plan guard's case.
variable "generation" {
  type    = number
  default = 1
}

# Above 0, the apply runs a local-exec sleep that long: the interruption case.
variable "sleep_seconds" {
  type    = number
  default = 0
}

resource "terraform_data" "server" {
  input            = var.name
  triggers_replace = [var.generation]
}

resource "terraform_data" "label" {
  input = "label-${var.name}"
}

resource "terraform_data" "slow" {
  count = var.sleep_seconds > 0 ? 1 : 0
  provisioner "local-exec" {
    command = "echo slow-step-started; sleep ${var.sleep_seconds}"
  }
}

output "provider_id" {
  value = "noop:///${terraform_data.server.output}"
}

output "generation" {
  value = var.generation
}
