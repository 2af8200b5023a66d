# boot.py: how hull starts python (`python3 -c <this>`); fd 0 holds "PROGRAM\0ARG\0..." (see cell.py)
import os,sys;_h=os.pread(0,os.fstat(0).st_size,0).decode().split("\0");_n=os.open("/dev/null",os.O_RDONLY);os.dup2(_n,0);os.close(_n);sys.argv[1:]=_h[1:];exec(_h[0])
