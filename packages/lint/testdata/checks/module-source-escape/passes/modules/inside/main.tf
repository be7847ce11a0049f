resource "terraform_data" "inside" {}
