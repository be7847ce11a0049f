# Azure Autoscale holds the scale set's capacity in both modes, because the
# scale set ignores changes to it. Autoscaling off: minimum = maximum =
# default = replicas and no rules, so a replicas change reaches the scale
# set through Autoscale, within about a minute. On: the annotations' min and
# max, with one rule to scale out and one to scale in on average CPU.
# tfcapi-lint:ignore pool/autoscaling-ignore-changes the scale set ignores changes to instances, its desired count, which the check's pattern does not know; Azure Autoscale holds the capacity in both modes (README "Exceptions")
resource "azurerm_monitor_autoscale_setting" "pool_autoscale_setting" {
  count = local.pool_plannable ? 1 : 0

  enabled             = true
  location            = local.location
  name                = local.autoscale_setting_name
  resource_group_name = local.resource_group_name
  tags                = local.tags
  target_resource_id  = azurerm_linux_virtual_machine_scale_set.pool_scale_set[0].id

  profile {
    name = "default"

    # With autoscaling the default is the minimum, never replicas: replicas
    # is then the observed capacity, and a default that followed it would
    # turn every scaling decision into a change.
    capacity {
      default = var.autoscaling.enabled ? var.autoscaling.min : local.desired_capacity
      maximum = var.autoscaling.enabled ? var.autoscaling.max : local.desired_capacity
      minimum = var.autoscaling.enabled ? var.autoscaling.min : local.desired_capacity
    }

    dynamic "rule" {
      for_each = var.autoscaling.enabled ? local.cpu_rules : {}

      content {
        metric_trigger {
          metric_name        = "Percentage CPU"
          metric_namespace   = "microsoft.compute/virtualmachinescalesets"
          metric_resource_id = azurerm_linux_virtual_machine_scale_set.pool_scale_set[0].id
          operator           = rule.value.operator
          statistic          = "Average"
          threshold          = rule.value.threshold
          time_aggregation   = "Average"
          time_grain         = "PT1M"
          time_window        = "PT10M"
        }

        scale_action {
          cooldown  = rule.value.cooldown
          direction = rule.value.direction
          type      = "ChangeCount"
          value     = 1
        }
      }
    }
  }

  lifecycle {
    precondition {
      condition     = var.autoscaling_scale_in_cpu_percent < var.autoscaling_scale_out_cpu_percent
      error_message = "autoscaling_scale_in_cpu_percent (${var.autoscaling_scale_in_cpu_percent}) must be below autoscaling_scale_out_cpu_percent (${var.autoscaling_scale_out_cpu_percent}), or the pool would scale in and out at once."
    }
  }
}

locals {
  # Out by one above the scale-out threshold, in by one below the scale-in
  # threshold, both over 10 minutes; scaling in waits longer, so a burst
  # does not flap the pool.
  cpu_rules = {
    scale-out = { operator = "GreaterThan", threshold = var.autoscaling_scale_out_cpu_percent, direction = "Increase", cooldown = "PT5M" }
    scale-in  = { operator = "LessThan", threshold = var.autoscaling_scale_in_cpu_percent, direction = "Decrease", cooldown = "PT10M" }
  }
}
