#requires -Version 5.1
# svc-auth.ps1: operator helper of the built-in identity on Windows (spec: "Operator helper commands"),
# the same actions, arguments, messages and exit codes as svc-auth.sh (script/svc-auth-actions.json is
# the one table both scripts are checked against). Installed under {install_root}\script\.
# SVC_HOME (default: the install root) holds work\. UNTESTED ON WINDOWS: no PowerShell exists on the
# machines that build svc; only its agreement with the table is checked (packaging/test).
#
#   print-initial-password             print the administrator plaintext password
#   set-initial-password               new admin password from stdin (one line, <= 72 bytes); restart to apply
#   rotate-initial-password            new random admin password; restart to apply
#   forget-initial-password            remove the plaintext line only
#   add-user <email> [role]            password on stdin; role default svc-viewer (via the administration UI)
#   delete-user <email>                remove identity and role binding (via the administration UI)
#   unlock-user <email|admin>          clear a sign-in lockout after too many failed passwords (via the UI)
#   user-token [email]                 password on stdin; password grant with svc-cli; prints the access token
#   automation-token                   client credentials with svc-automation; prints the access token
#   admin-ui                           run the administration UI (idles when SVC_AUTH_ADMIN_UI=off)
#
# Passwords come from standard input (pipe them: Get-Content pw.txt | .\svc-auth.ps1 user-token),
# never from arguments or the environment. A secret file must be a regular file (not a link) whose
# ACL grants access to its owner (and SYSTEM/Administrators) only.
# Windows: the identity store is in memory there (spec rule 6 of add-user/delete-user).
# Exit codes: 0 done, 1 refused, 2 usage, 3 reachability error (administration UI or issuer).
[CmdletBinding()]
param(
  [Parameter(Position = 0)][string]$Action = '',
  [Parameter(Position = 1, ValueFromRemainingArguments = $true)][string[]]$Rest = @()
)
$ErrorActionPreference = 'Stop'

$ScriptDir = Split-Path -Parent $MyInvocation.MyCommand.Path
$InstallRoot = Split-Path -Parent $ScriptDir
$SvcHome = if ($env:SVC_HOME) { $env:SVC_HOME } else { $InstallRoot }
$SecretsDir = Join-Path $SvcHome 'work\auth\secrets'
$Helper = Join-Path $InstallRoot 'packages\identity\bin\credentials-cli.ts'
$Stdin = @($input)

function Stop-WithMessage([int]$Code, [string]$Message) {
  [Console]::Error.WriteLine("svc-auth: $Message")
  exit $Code
}

function Show-Usage {
  Get-Content -LiteralPath $MyInvocation.ScriptName | Select-Object -Skip 7 -First 10 |
    ForEach-Object { [Console]::Error.WriteLine(($_ -replace '^# ?', '')) }
  exit 2
}

# The install's own Node.js 24 (it runs .ts directly), else the one on PATH.
function Get-NodeBin {
  foreach ($candidate in @((Join-Path $InstallRoot 'node_modules\.bin\node.exe'), (Join-Path $InstallRoot 'node.exe'))) {
    if (Test-Path -LiteralPath $candidate -PathType Leaf) { return $candidate }
  }
  $found = Get-Command node -ErrorAction SilentlyContinue
  if ($null -eq $found) { Stop-WithMessage 1 'node not found (install the repository dependencies: npm ci)' }
  return $found.Source
}

# The secret-file rules, on each use: a regular file whose ACL grants its owner only.
function Test-Secret([string]$File) {
  if (-not (Test-Path -LiteralPath $File)) {
    Stop-WithMessage 1 "${File}: secret file is missing (start svc once in builtin mode to create it)"
  }
  $item = Get-Item -LiteralPath $File -Force
  if ($item.Attributes -band [IO.FileAttributes]::ReparsePoint) {
    Stop-WithMessage 1 "${File}: secret file must be a regular file (it is a symbolic link)"
  }
  if ($item.PSIsContainer) { Stop-WithMessage 1 "${File}: secret file must be a regular file" }
  $acl = Get-Acl -LiteralPath $File
  $allowed = @($acl.Owner, 'NT AUTHORITY\SYSTEM', 'BUILTIN\Administrators')
  foreach ($rule in $acl.Access) {
    if ($allowed -notcontains $rule.IdentityReference.Value) {
      Stop-WithMessage 1 "${File}: secret file must be readable by its owner only (its ACL grants $($rule.IdentityReference.Value))"
    }
  }
}

function Invoke-Helper([string[]]$Arguments, [bool]$WithStdin) {
  $node = Get-NodeBin
  if ($WithStdin) { $Stdin | & $node $Helper @Arguments } else { $null | & $node $Helper @Arguments }
  exit $LASTEXITCODE
}

function Assert-Count([int]$Min, [int]$Max, [string]$Usage) {
  if ($Rest.Count -lt $Min -or $Rest.Count -gt $Max) { Stop-WithMessage 2 "usage: svc-auth.ps1 $Usage" }
}

$WindowsMemoryStore = 'on Windows the identity store is in memory: a user created by add-user is lost when the identity provider restarts, while its role binding stays and then names a vanished subject; delete the stale binding (DELETE /svc/principal/<principal-id>) and run add-user again (a re-created user gets a new user_id)'

if ($Action -eq '') { Show-Usage }
switch -CaseSensitive ($Action) {
  { $_ -in 'print-initial-password', 'rotate-initial-password', 'forget-initial-password' } {
    Assert-Count 0 0 $Action
    Test-Secret (Join-Path $SecretsDir 'initial-admin-credentials')
    Invoke-Helper (@($Action, $SvcHome)) $false
  }
  'set-initial-password' {
    Assert-Count 0 0 'set-initial-password  (password on stdin, never as an argument)'
    Test-Secret (Join-Path $SecretsDir 'initial-admin-credentials')
    Invoke-Helper (@($Action, $SvcHome)) $true
  }
  'add-user' {
    Assert-Count 1 2 'add-user <email> [role]  (password on stdin)'
    [Console]::Error.WriteLine("svc-auth: note: $WindowsMemoryStore")
    Invoke-Helper (@($Action, $SvcHome) + $Rest) $true
  }
  'delete-user' {
    Assert-Count 1 1 'delete-user <email>'
    [Console]::Error.WriteLine("svc-auth: note: $WindowsMemoryStore")
    Invoke-Helper (@($Action, $SvcHome) + $Rest) $false
  }
  'unlock-user' {
    Assert-Count 1 1 'unlock-user <email>'
    Invoke-Helper (@($Action, $SvcHome) + $Rest) $false
  }
  'user-token' {
    Assert-Count 0 1 'user-token [email]  (password on stdin)'
    Invoke-Helper (@($Action, $SvcHome) + $Rest) $true
  }
  'automation-token' {
    Assert-Count 0 0 'automation-token'
    Test-Secret (Join-Path $SecretsDir 'automation-client')
    Invoke-Helper (@($Action, $SvcHome)) $false
  }
  'admin-ui' {
    Assert-Count 0 0 'admin-ui'
    # The administration UI program idles without a listener when SVC_AUTH_ADMIN_UI=off, so that the
    # system application stays up for health checks.
    $env:SVC_HOME = $SvcHome
    & (Get-NodeBin) (Join-Path $InstallRoot 'packages\identity\bin\svc-auth-admin.ts')
    exit $LASTEXITCODE
  }
  { $_ -in '-h', '--help', 'help' } { Show-Usage }
  default { Stop-WithMessage 2 "unknown action '$Action' (svc-auth.ps1 --help lists the actions)" }
}
