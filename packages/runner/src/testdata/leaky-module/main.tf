# A module that prints every kind of secret the runner must redact: an environment credential,
# a sensitive variable, the bootstrap data (raw and decoded) and a value only its plan marks sensitive.
variable "token" {
  type = string
}

variable "bootstrap_data" {
  type = string
}

variable "fail" {
  type    = bool
  default = false
}

locals {
  plan_only = sensitive("plan-canary-5b7e0c1d9a2f4e6b")
}

resource "terraform_data" "holder" {
  input = local.plan_only
}

resource "terraform_data" "leak" {
  triggers_replace = [timestamp()]
  provisioner "local-exec" {
    command = "echo env=$AWS_SECRET_ACCESS_KEY var=${nonsensitive(var.token)} boot=${nonsensitive(base64decode(var.bootstrap_data))} raw=${nonsensitive(var.bootstrap_data)} plan=${nonsensitive(local.plan_only)}; echo stderr-env=$AWS_SECRET_ACCESS_KEY var=${nonsensitive(var.token)} >&2"
  }
}

resource "terraform_data" "fail" {
  count      = var.fail ? 1 : 0
  depends_on = [terraform_data.leak]
  provisioner "local-exec" {
    command = "printf 'oops\\nError: env=%s var=%s plan=%s boot=%s\\n' \"$AWS_SECRET_ACCESS_KEY\" '${nonsensitive(var.token)}' '${nonsensitive(local.plan_only)}' '${nonsensitive(base64decode(var.bootstrap_data))}' >&2; exit 3"
  }
}
