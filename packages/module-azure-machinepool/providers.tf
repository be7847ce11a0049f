# The azurerm provider in the cluster's subscription, taken from the
# cluster's exports. Credentials come only from the identity Secret's ARM_*
# variables; without exports the subscription falls back to
# ARM_SUBSCRIPTION_ID, and the listing's precondition explains what is
# missing.
provider "azurerm" {
  # Registering resource providers is a prerequisite, not this module's job.
  resource_provider_registrations = "none"
  subscription_id                 = local.subscription_id

  features {
    virtual_machine_scale_set {
      # Load-bearing. A custom data change, which every bootstrap token
      # rotation is (about every 7.5 minutes), marks the instances for
      # update, and with the provider's defaults (true) azurerm then updates
      # and reimages every one of them. False updates the scale set's model
      # only: new instances get the new data, running ones are left alone.
      reimage_on_manual_upgrade    = false
      roll_instances_when_required = false
      # Delete instances through the scale set before the scale set itself,
      # never by force (the provider's defaults, spelled out).
      force_delete                  = false
      scale_to_zero_before_deletion = true
    }
  }
}
