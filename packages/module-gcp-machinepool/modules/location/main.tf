# The pool's project and region as of its first apply, and whether the
# cluster's exports have moved them since. No cloud provider (terraform_data
# is built in), so tests/ runs anywhere with `tofu test`.
#
# The google provider replaces a managed instance group (and its autoscaler)
# whose project or region changes, and the group keeps its name, so the old
# one would be deleted first: every instance at once. The group refuses a
# move instead (instance_group.tf). The instance template needs no pin:
# every change of it is a new template under a new name_prefix name.

terraform {
  required_version = ">= 1.5.0"
}

resource "terraform_data" "first_location" {
  input = local.location

  lifecycle {
    ignore_changes = [input]
  }
}

locals {
  location = {
    project = var.project
    region  = var.region
  }
  # .input, not .output: known at the first plan, the first apply's afterwards.
  first = terraform_data.first_location.input
  # Without exports nothing moved: the template's precondition says what is missing.
  moved = (var.project != null || var.region != null) && local.first != local.location
}
