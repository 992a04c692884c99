format = 2
host.arch = x86_64
# comment

repetitions = 3
