# Built-in terraform_data only: no provider to install, no network at init.
# terraform_data needs Terraform 1.4, so the module runs under Terraform
# 1.5 and every OpenTofu release; its tests/ need `tofu test` (OpenTofu;
# Terraform 1.5.7 has no `terraform test`).
terraform {
  required_version = ">= 1.5.0"
}
