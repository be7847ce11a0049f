# A module whose run fails with an error message that prints sensitive values, as a provider's
# API error does: a precondition's message (a long line the runtime wraps at spaces, so the
# passphrase is split over two lines), a function error quoting its argument, and a postcondition.
variable "credential" {
  type      = string
  sensitive = true
}

variable "passphrase" {
  type      = string
  sensitive = true
}

variable "fail_with" {
  type    = string
  default = "precondition"
}

resource "terraform_data" "precondition" {
  count = var.fail_with == "precondition" ? 1 : 0
  input = "x"
  lifecycle {
    precondition {
      condition     = length(nonsensitive(var.credential)) == 0
      error_message = "The remote API at the configured endpoint rejected the passphrase ${nonsensitive(var.passphrase)} and the credential ${nonsensitive(var.credential)} for this account."
    }
  }
}

resource "terraform_data" "function" {
  count = var.fail_with == "function" ? 1 : 0
  input = tonumber(nonsensitive(var.passphrase))
}

resource "terraform_data" "postcondition" {
  count = var.fail_with == "postcondition" ? 1 : 0
  input = "x"
  lifecycle {
    postcondition {
      condition     = self.output == "never"
      error_message = "The provider could not finish: the API answered 403 for credential ${nonsensitive(var.credential)} signed with passphrase ${nonsensitive(var.passphrase)}."
    }
  }
}
