// tfcapi-lint:ignore input/user-variable-default every object sets it
// tfcapi-lint:ignore input/reserved a fixture for stacked suppressions
variable "count" {
  type = number
}
