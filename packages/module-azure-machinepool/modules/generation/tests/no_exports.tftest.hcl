# A pool whose exports are missing: the root module refuses to plan its
# scale set (membership.tf), but the name must still be stable and known.

variables {
  machinepool_name             = "workers"
  failure_domains              = []
  kubernetes_version           = null
  os_disk_storage_account_type = "Premium_LRS"
  spot                         = false
  trusted_launch               = false
  admin_username               = null
  location                     = null
  resource_group_name          = null
}

run "null_exports_apply" {
  assert {
    condition     = output.scale_set_name == "workers-8b7b33cb" && !output.placement_moved
    error_message = "Null exports name a generation like any others."
  }
}

run "null_exports_keep_the_name" {
  command = plan

  assert {
    condition     = output.scale_set_name == "workers-8b7b33cb" && !output.placement_moved
    error_message = "Null exports compare equal to the null exports of the first apply."
  }
}
