host.cpu = a
not a key value line
