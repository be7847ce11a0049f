# The boot image with the pool's version filled in (modules/image).
module "image" {
  source = "./modules/image"

  image              = var.image
  kubernetes_version = var.kubernetes_version
}
