# Built-in terraform_data only: no provider to install, no network at init.
# terraform_data needs Terraform 1.4; `tofu test` / `terraform test` with
# these test files needs 1.6. Every OpenTofu release has both.
terraform {
  required_version = ">= 1.6.0"
}
