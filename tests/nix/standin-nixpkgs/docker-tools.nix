{ mkDrv, python3, hostPkg }:
{ }
