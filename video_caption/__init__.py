"""Video captioning (YouTube2Text / MSVD) with ACVI: features, data, model, training."""
