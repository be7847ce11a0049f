# The runtime floor and the exact provider pin. A provider bump is its own
# change: every attribute this module sets was read against 5.7.0.
terraform {
  required_version = ">= 1.5.0"

  required_providers {
    azurerm = {
      source  = "hashicorp/azurerm"
      version = "5.7.0"
    }
  }
}
