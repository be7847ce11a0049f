# Built-in terraform_data and terraform_remote_state only: no provider to install, no network at
# init. terraform_data needs Terraform 1.4, so the module runs under Terraform 1.5.7 and every
# OpenTofu release; its tests/ need `tofu test`.
terraform {
  required_version = ">= 1.5.0"
}
