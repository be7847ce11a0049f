# The runtime floor and the exact provider pin. A provider bump is its own
# change: every attribute this module sets was read against 8.5.0.
terraform {
  required_version = ">= 1.5.0"

  required_providers {
    google = {
      source  = "hashicorp/google"
      version = "8.5.0"
    }
  }
}
