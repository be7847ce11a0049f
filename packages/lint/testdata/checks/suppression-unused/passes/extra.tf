# tfcapi-lint:ignore input/user-variable-default every object of this module sets its region
variable "region" {
  type = string
}
