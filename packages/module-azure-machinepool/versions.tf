# The runtime floor and the provider line. Validated against hashicorp/azurerm
# built at tag v5.2.0 (commit 8d8282ef5b; README): a bump past 5.x is its own change.
terraform {
  required_version = ">= 1.5.0"

  required_providers {
    azurerm = {
      source  = "hashicorp/azurerm"
      version = "~> 5.2"
    }
  }
}
