# Version 1 of a module whose version 2 (written by plan-imports-moves.integration.test.ts) renames
# terraform_data.old_name with a moved block and adopts terraform_data.adopted by an import.
variable "name" {
  type = string
}

resource "terraform_data" "old_name" {
  input = var.name
}

output "provider_id" {
  value = "noop:///${terraform_data.old_name.output}"
}
