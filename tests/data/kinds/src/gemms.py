import torch, sys
which = sys.argv[1]
n = 4096
if which == "dgemm":
    a = torch.randn(n, n, dtype=torch.float64, device="cuda"); b = torch.randn_like(a)
elif which == "bf16":
    a = torch.randn(n, n, dtype=torch.bfloat16, device="cuda"); b = torch.randn_like(a)
elif which == "sgemm":
    torch.backends.cuda.matmul.allow_tf32 = False
    a = torch.randn(n, n, dtype=torch.float32, device="cuda"); b = torch.randn_like(a)
for _ in range(2):
    c = a @ b
torch.cuda.synchronize()
print(which, "ok", float(c.float().abs().mean()))
