variable "tags" {
  type = map(string)
}

resource "terraform_data" "network" {
  input = var.tags
}
