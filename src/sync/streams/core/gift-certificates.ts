import { giftCertificateRaw, mapGiftCertificate } from '../../../mappers/core/gift-certificates.ts';
import { defineRestStream } from '../rest.ts';

/**
 * Gift certificates. This list answers a bare array without Data* headers, so
 * the pager stops on a short page. Read whole on every run: the spec does not
 * say that it honours ModifiedOn filters.
 */
export default defineRestStream({
  resource: 'giftcertificates',
  path: '/giftcertificates',
  idField: 'GiftCertificateId',
  mode: 'full',
  variants: ['core'],
  raw: giftCertificateRaw,
  map: mapGiftCertificate,
  fields: { company_id: 'CompanyId', customer_id: 'CustomerId', amount: 'Amount', balance: 'Balance', issued_on: 'IssuedOn' },
  table: {
    name: 'gift_certificates',
    idType: 'text',
    columns: { company_id: 'text', customer_id: 'text', amount: 'numeric', balance: 'numeric', issued_on: 'date' },
  },
});
