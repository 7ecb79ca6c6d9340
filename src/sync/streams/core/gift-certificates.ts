import { date, id, numeric } from '../../columns.ts';
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
  table: {
    name: 'gift_certificates',
    columns: {
      company_id: id('CompanyId'),
      customer_id: id('CustomerId'),
      amount: numeric('Amount'),
      balance: numeric('Balance'),
      issued_on: date('IssuedOn'),
    },
  },
});
