variable "password" {
  type      = string
  sensitive = true
}
variable "size" {
  type    = string
  default = "1"
}
resource "terraform_data" "sized" {
  input = { size = var.size, tags = ["a", var.size], nested = { keep = "k", grow = var.size } }
}
resource "terraform_data" "secret" {
  input = var.password
}
resource "terraform_data" "replaced" {
  input            = "r"
  triggers_replace = [var.size]
}
resource "terraform_data" "gone" {
  count = var.size == "1" ? 1 : 0
  input = "bye"
}
resource "terraform_data" "fresh" {
  count = var.size == "1" ? 0 : 1
  input = { note = "new", at = terraform_data.sized.output }
}
output "password" {
  value     = var.password
  sensitive = true
}
output "size" {
  value = var.size
}
