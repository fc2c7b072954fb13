using System;
using System.Runtime.InteropServices;
namespace Kubenode {
    public static class LsaSecret {
        [StructLayout(LayoutKind.Sequential)]
        struct LSA_UNICODE_STRING { public ushort Length; public ushort MaximumLength; public IntPtr Buffer; }
        [StructLayout(LayoutKind.Sequential)]
        struct LSA_OBJECT_ATTRIBUTES { public int Length; public IntPtr RootDirectory; public IntPtr ObjectName; public uint Attributes; public IntPtr SecurityDescriptor; public IntPtr SecurityQualityOfService; }
        [DllImport("advapi32.dll")]
        static extern uint LsaOpenPolicy(IntPtr system, ref LSA_OBJECT_ATTRIBUTES attributes, uint access, out IntPtr policy);
        [DllImport("advapi32.dll")]
        static extern uint LsaStorePrivateData(IntPtr policy, ref LSA_UNICODE_STRING key, IntPtr data);
        [DllImport("advapi32.dll")]
        static extern uint LsaNtStatusToWinError(uint status);
        [DllImport("advapi32.dll")]
        static extern uint LsaClose(IntPtr policy);
        public static uint Delete(string name) {
            var attributes = new LSA_OBJECT_ATTRIBUTES();
            attributes.Length = Marshal.SizeOf(typeof(LSA_OBJECT_ATTRIBUTES));
            IntPtr policy;
            uint status = LsaOpenPolicy(IntPtr.Zero, ref attributes, 0x20, out policy);
            if (status != 0) { return LsaNtStatusToWinError(status); }
            var key = new LSA_UNICODE_STRING();
            key.Buffer = Marshal.StringToHGlobalUni(name);
            key.Length = (ushort)(name.Length * 2);
            key.MaximumLength = (ushort)(key.Length + 2);
            status = LsaStorePrivateData(policy, ref key, IntPtr.Zero);
            Marshal.FreeHGlobal(key.Buffer);
            LsaClose(policy);
            return LsaNtStatusToWinError(status);
        }
    }
}
