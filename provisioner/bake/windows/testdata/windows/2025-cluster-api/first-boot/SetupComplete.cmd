@echo off
rem kubenode: close what the build opened, then remove the answer files, which hold the Administrator password.
%SystemRoot%\System32\WindowsPowerShell\v1.0\powershell.exe -NoProfile -NonInteractive -ExecutionPolicy Bypass -File "C:\Windows\Setup\Scripts\kubenode-first-boot.ps1"
if exist "C:\Windows\Setup\Scripts\kubenode-first-boot.ps1" del /f /q "C:\Windows\Setup\Scripts\kubenode-first-boot.ps1"
if exist "C:\Windows\System32\Sysprep\kubenode-firstboot.xml" del /f /q "C:\Windows\System32\Sysprep\kubenode-firstboot.xml"
if exist "C:\Windows\Panther\unattend.xml" del /f /q "C:\Windows\Panther\unattend.xml"
if exist "C:\Windows\Panther\Autounattend.xml" del /f /q "C:\Windows\Panther\Autounattend.xml"
if exist "C:\Windows\Panther\Unattend\unattend.xml" del /f /q "C:\Windows\Panther\Unattend\unattend.xml"
if exist "C:\Windows\Panther\Unattend\Autounattend.xml" del /f /q "C:\Windows\Panther\Unattend\Autounattend.xml"
if exist "C:\Windows\System32\Sysprep\unattend.xml" del /f /q "C:\Windows\System32\Sysprep\unattend.xml"
if exist "C:\Windows\System32\Sysprep\Autounattend.xml" del /f /q "C:\Windows\System32\Sysprep\Autounattend.xml"
rem The SetupComplete.cmd that was here before kubenode's, if any.
if exist "C:\Windows\Setup\Scripts\SetupComplete-before-kubenode.cmd" call "C:\Windows\Setup\Scripts\SetupComplete-before-kubenode.cmd"
rem Cluster API: cloudbase-init runs the machine's bootstrap data (kubeadm join) now that Setup has finished.
sc.exe config cloudbase-init start= auto
sc.exe start cloudbase-init
del /f /q "%~f0"
