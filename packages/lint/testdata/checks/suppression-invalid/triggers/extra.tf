# tfcapi-lint:ignore input/user-variable-default
variable "region" {
  type = string
}

# tfcapi-lint:ignore input/no-such-check because
variable "zone" {
  type    = string
  default = "a"
}
