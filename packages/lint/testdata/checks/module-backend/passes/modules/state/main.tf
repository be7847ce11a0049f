resource "terraform_data" "marker" {}
