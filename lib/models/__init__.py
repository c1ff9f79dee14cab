"""Neural network architectures shared by notebooks (CIFAR-10 ResNets)."""
