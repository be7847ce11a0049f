provider "aws" {
  region     = "eu-west-1"
  access_key = "AKIAEXAMPLE"

  assume_role {
    role_arn = "arn:aws:iam::1:role/x"
    token    = "t0ken"
  }
}
