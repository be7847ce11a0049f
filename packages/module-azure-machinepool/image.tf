# The image with the pool's version filled in (modules/image).
module "image" {
  source = "./modules/image"

  image_id           = var.image_id
  kubernetes_version = var.kubernetes_version
}
