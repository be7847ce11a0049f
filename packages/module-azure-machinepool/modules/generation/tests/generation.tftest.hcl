# The scale set's generation name. No provider: `tofu init && tofu test` here.
# Runs share one state, in order, like successive applies of one pool;
# plan-only runs leave it alone. The inputs are those of the root module's
# tests (tests/machinepool.tftest.hcl), so the names match theirs.

variables {
  machinepool_name             = "workers"
  failure_domains              = []
  kubernetes_version           = "v1.34.1"
  os_disk_storage_account_type = "Premium_LRS"
  spot                         = false
  trusted_launch               = false
  admin_username               = "captf"
  location                     = "westeurope"
  resource_group_name          = "Captf-Demo-RG"
}

run "first_apply" {
  assert {
    condition     = output.scale_set_name == "workers-a8a3599f" && !output.placement_moved
    error_message = "The first generation's name hashes the pool's own inputs only, as before the exports counted."
  }
}

run "reapply_keeps_the_name" {
  assert {
    condition     = output.scale_set_name == "workers-a8a3599f"
    error_message = "Unchanged inputs keep the generation."
  }
}

run "admin_username_rolls" {
  command = plan

  variables {
    admin_username = "azureuser"
  }

  assert {
    condition     = output.scale_set_name == "workers-3cefcf9d" && output.placement_moved
    error_message = "azurerm replaces a scale set whose admin_username changes: a new generation."
  }
}

run "location_rolls" {
  command = plan

  variables {
    location = "northeurope"
  }

  assert {
    condition     = output.scale_set_name == "workers-9d1d4013" && output.placement_moved
    error_message = "azurerm replaces a scale set whose location changes: a new generation."
  }
}

run "location_spelling_keeps_the_name" {
  command = plan

  variables {
    location = "West Europe"
  }

  assert {
    condition     = output.scale_set_name == "workers-a8a3599f" && !output.placement_moved
    error_message = "azurerm normalises a location: West Europe is westeurope, no new generation."
  }
}

run "resource_group_rolls" {
  command = plan

  variables {
    resource_group_name = "captf-demo-rg-2"
  }

  assert {
    condition     = output.scale_set_name == "workers-53b31371" && output.placement_moved
    error_message = "azurerm replaces a scale set whose resource group changes: a new generation."
  }
}

run "kubernetes_version_rolls" {
  command = plan

  variables {
    kubernetes_version = "v1.34.2"
  }

  assert {
    condition     = output.scale_set_name == "workers-c6a3de6a"
    error_message = "A version change is a new generation, named as in the root module's tests."
  }
}

run "moved_placement_applies" {
  variables {
    location = "northeurope"
  }

  assert {
    condition     = output.scale_set_name == "workers-9d1d4013"
    error_message = "The new generation is the one location_rolls planned."
  }
}

run "moving_back_returns_to_the_first_name" {
  variables {
    location = "westeurope"
  }

  assert {
    condition     = output.scale_set_name == "workers-a8a3599f"
    error_message = "Back at the first apply's exports the name is the first generation's again: the generation in between holds the other name."
  }
}

run "long_name_is_cut" {
  command = plan

  variables {
    machinepool_name = "Workers_Of.The-Very-Long-Pool-Name-That-Goes-On-And-On"
  }

  assert {
    condition     = can(regex("^workers-of-the-very-long-pool-name-that-g-[0-9a-f]{8}$", output.scale_set_name)) && length(output.scale_set_name) <= 50
    error_message = "The name is the MachinePool's made valid, at most 41 characters, then - and the hash."
  }
}
