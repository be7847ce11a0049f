terraform {
  backend "s3" {
    bucket = "state"
  }
}
