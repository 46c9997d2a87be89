/** Part B paging: 0-based pageNum, pageSize 1..MAX_PAGE_SIZE (enrollment-api.md). Route schemas enforce the bounds. */
export const MAX_PAGE_SIZE = 100;
/** what a listing returns when the request names no pageSize */
export const DEFAULT_PAGE_SIZE = 20;
/** far beyond any real listing; bounds the OFFSET a caller can make the store skip */
export const MAX_PAGE_NUM = 1_000_000;

export interface Paging {
  pageNum: number;
  pageSize: number;
}

export function toWindow(p: Paging): { offset: number; limit: number } {
  return { offset: p.pageNum * p.pageSize, limit: p.pageSize };
}

export function totalPages(totalCount: number, pageSize: number): number {
  return Math.ceil(totalCount / pageSize);
}

/** A page as people read it: which page of how many, of how many records in all (the portal's listings). */
export interface NumberedPage<T> {
  total: number;
  totalPages: number;
  /** 0-based, as pageNum */
  page: number;
  pageSize: number;
  items: T[];
}

export function numbered<T, P extends { total: number; items: T[] }>(p: P, paging: Paging): Omit<P, "total" | "items"> & NumberedPage<T> {
  return { ...p, totalPages: totalPages(p.total, paging.pageSize), page: paging.pageNum, pageSize: paging.pageSize };
}
