terraform {
  required_version = ">= 1.5.0"
}

resource "terraform_data" "group" {
  input = {
    name      = var.machinepool_name
    replicas  = var.replicas
    user_data = var.bootstrap_data
    tags      = var.captf_tags
  }
}

locals {
  ids = [for i in range(var.replicas) : "noop:///${var.captf_object.namespace}/${var.machinepool_name}/${i}"]
}

resource "example_autoscaling_group" "pool" {
  min_size         = var.autoscaling.enabled ? var.autoscaling.min : var.replicas
  max_size         = var.autoscaling.enabled ? var.autoscaling.max : var.replicas
  desired_capacity = var.replicas
  tags             = var.captf_tags

  lifecycle {
    ignore_changes = [desired_capacity]
  }
}
