# The runtime floor and the provider line. Validated against hashicorp/google
# built at commit e03b7622a2 (untagged 8.0.0; README): a bump past 8.x is its own change.
terraform {
  required_version = ">= 1.5.0"

  required_providers {
    google = {
      source  = "hashicorp/google"
      version = "~> 8.0"
    }
  }
}
