# The pinned project and region. No provider: `tofu init && tofu test` here.
# Runs share one state, in order, like successive applies of one pool;
# plan-only runs leave it alone.

variables {
  project = "captf-demo"
  region  = "europe-west4"
}

run "first_apply_pins" {
  assert {
    condition     = output.first_project == "captf-demo" && output.first_region == "europe-west4" && !output.moved
    error_message = "The first apply's project and region are the pool's."
  }
}

run "unchanged_exports_stay" {
  command = plan

  assert {
    condition     = !output.moved
    error_message = "Unchanged exports keep the pool where it is."
  }
}

run "project_change_moves" {
  command = plan

  variables {
    project = "captf-other"
  }

  assert {
    condition     = output.moved && output.first_project == "captf-demo"
    error_message = "Another project is a move, and the first apply's project is kept."
  }
}

run "region_change_moves" {
  command = plan

  variables {
    region = "us-central1"
  }

  assert {
    condition     = output.moved && output.first_region == "europe-west4"
    error_message = "Another region is a move, and the first apply's region is kept."
  }
}

run "missing_exports_do_not_move" {
  command = plan

  variables {
    project = null
    region  = null
  }

  assert {
    condition     = !output.moved
    error_message = "Without exports nothing moved: the template's precondition reports them missing."
  }
}

run "reapply_at_the_first_location" {
  variables {
    project = "captf-demo"
  }

  assert {
    condition     = output.first_project == "captf-demo" && !output.moved
    error_message = "Back at the first apply's project, the pool is where it was."
  }
}
